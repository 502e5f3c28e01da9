# A Hugging Face GPT-2 built from its config (random weights, nothing downloaded) trained for a few steps in
# float32 on random tokens: fp32 matmuls on CUDA cores, the case for TF32 and bf16 autocast.
import torch
from transformers import GPT2Config, GPT2LMHeadModel

dev = "cuda" if torch.cuda.is_available() else "cpu"
layers, width, batch, seq = (6, 768, 8, 512) if dev == "cuda" else (2, 64, 2, 32)
torch.manual_seed(0)
config = GPT2Config(n_layer=layers, n_embd=width, n_head=max(width // 64, 1), n_positions=seq, vocab_size=8192,
                    bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config).to(dev)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
tokens = torch.randint(0, config.vocab_size, (batch, seq), device=dev)
for _ in range(8):
    loss = model(input_ids=tokens, labels=tokens).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
if dev == "cuda":
    torch.cuda.synchronize()
