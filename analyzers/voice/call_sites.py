"""Where in the user's code a Time-line op's device time comes from, site by site where it comes from several.

One ATen op is often called from places that do different things: aten::copy_ runs the host-to-device copy of a
`.to("cuda")` and the device-to-host copy of a `.cpu()` alike, and each is its own fix (create on the device;
keep the result on the device). Naming only the largest call site for all of the op's calls hides the others
(heldout-user13 xxaa: "aten::copy_ 96% (15 calls; from the `.to()` ...)" where 5 of the 15 were the `.cpu()`'s
device-to-host copies, 27% of the GPU's busy time). So where a second call site holds SITE_MIN_SHARE of the op's
device time, each such site is said with the op's calls it made ("10 HtoD from the `.to()` in ..., 5 DtoH from
the `.cpu()` in ..."), a copy's by its direction (the Memcpy kind its frame launched), and the sites left over
are counted. A call is counted once however many activities it launched (aten::mm's GEMM and its cuBLAS workspace
memset), so the sites add up to the op's calls: gp_streams read "(2,000 calls; 2,000 kernels from ... streams1,
2,000 kernels from ... streams2)", each site's 1,000 GEMMs and 1,000 memsets counted.

What would make it say too much: the with_stack frames charge an op to the user's innermost frame; a helper
called from two places is one site (its own frame), so two sites are two frames of the user's code, never one line
read twice. Below SITE_MIN_SHARE a site stays unnamed (a warm-up's one copy beside a loop's thousand).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tracetriage.analyzers.model.units import integer
from tracetriage.analyzers.voice.said import claim
from tracetriage.analyzers.voice.sources import hotspot_source, source_words

SITE_MIN_SHARE = 0.10   # a call site named beside the largest holds this share of the op's device time
_DIRECTION = re.compile(r"^Memcpy (HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD)\b")


def _same_frame(x, y) -> bool:
    return (x.file, x.line, x.function, x.call, x.call_kind) == (y.file, y.line, y.function, y.call, y.call_kind)


def _direction(a, site) -> str:
    """The one copy direction the site's frame launched ('HtoD'), '' where it launched other work or several."""
    kinds = set()
    for kernel, lines in (a.source_lines.kernels or {}).items():
        if any(_same_frame(site, x) for x in lines):
            m = _DIRECTION.match(kernel)
            kinds.add(m.group(1) if m else None)
    return kinds.pop() if len(kinds) == 1 and None not in kinds else ""


def hotspot_sites(a, name: str, index: int = -1) -> str:
    """After a Time-line op's calls: '; from the `.to()` in `f` (x.py:3)' where one call site holds it, else
    '; 10 HtoD from the `.to()` in ..., 5 DtoH from the `.cpu()` in ...' (each count claimed as time.sites.INDEX,
    `index` the op's place among a.hotspots; -1: a host hotspot, said by its largest site)."""
    src = a.source_lines.hotspots.get(name, ()) if a.source_lines else ()
    if index < 0:
        return f";{hotspot_source(src)}" if src else ""
    total = a.hotspots[index].device_us
    more = a.source_lines.hotspots_more.get(name, ()) if a.source_lines else ()
    sites = _said_alike(a, tuple(src) + tuple(more))
    named = [x for i, x in enumerate(sites) if i == 0 or x.us >= SITE_MIN_SHARE * total]
    if len(named) < 2:
        return f";{hotspot_source(src)}" if src else ""
    parts = []
    for x in named:
        what = x.direction or ("call" if x.count == 1 else "calls")     # the op's calls, as its "(N calls; ...)"
        parts.append(f"{claim(f'time.sites.{index}', x.count, integer(x.count))} {what} from {x.words}")
    rest = len(sites) - len(named)
    more = f", and {rest} more call site{'s' if rest > 1 else ''}" if rest else ""
    return "; " + ", ".join(parts) + more


@dataclass
class _Said:
    words: str          # the site as the sentence says it: "the `Linear(...)` in `forward` (common.py:23)"
    count: int
    us: float
    direction: str


def _said_alike(a, src) -> list[_Said]:
    """The op's call sites as the sentence would say them, sites said in the same words made one: frames that differ
    below what the words show (one `Linear(...)` line reached from four module instances) are one site to the reader
    ('7 kernels from the `Linear(...)` in `forward` (common.py:23), 14 kernels from the
    `Linear(...)` in `forward` (common.py:23)'). Largest first, as the sites came."""
    out: dict[str, _Said] = {}
    for x in src:
        words, direction = source_words(x), _direction(a, x)
        if words in out:
            said = out[words]
            said.count += x.count
            said.us += x.us
            said.direction = said.direction if said.direction == direction else ""
        else:
            out[words] = _Said(words, x.count, x.us, direction)
    return sorted(out.values(), key=lambda s: -s.us)
