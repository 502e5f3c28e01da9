"""tools/grader_agreement: a held-out set graded once, each file's grade against the teacher's."""
from __future__ import annotations

from tools.grader_agreement import agreement, main


def test_agreement_counts_within_a_quarter_and_the_mean_error():
    a = agreement([(1.0, 0.8), (0.0, 0.5), (0.4, 0.0)])
    assert (a["within"], a["too_lenient"], a["too_harsh"]) == (1, 1, 1)
    assert a["mean_error"] == round((0.2 + 0.5 + 0.4) / 3, 4)


def test_a_held_out_set_is_graded_once_per_file_and_per_part(tmp_path, capsys):
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "M02.04-c--1.toml").write_text(
        'pattern = "a drain after each sync"\ncause = "synchronization"\nexperiment = "remove the .item()"\n')
    (tmp_path / "answers" / "M02.04-c--2.toml").write_text('cause = "launch overhead or synchronization"\n')
    (tmp_path / "answers" / "M02.04-c--3.toml").write_text('causes = "a typo, refused"\n')
    (tmp_path / "teacher_overall.tsv").write_text("file\toverall\twhy\nM02.04-c--1.toml\t1.0\tright\n"
                                                  "M02.04-c--2.toml\t1.0\tthe teacher took the hedge\n"
                                                  "M02.04-c--3.toml\t0.0\tunreadable\n")
    (tmp_path / "teacher.tsv").write_text("file\tpart\tscore\twhy\nM02.04-c--1.toml\tcause\t1\tright\n"
                                          "M02.04-c--2.toml\tcause\t1\ttook the hedge\n")
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    # the hedge earns 0.4 of its part (0.4 of the file): off the teacher's 1.0 by 0.84 and 0.6
    assert out[0] == "files: 2 of 3 within 0.25 of the teacher (66.7%), mean error 0.28; 1 too harsh, 0 too lenient"
    assert out[1] == "parts: 1 of 2 within 0.25 of the teacher (50.0%), mean error 0.3; 1 too harsh, 0 too lenient"


def test_a_missing_teacher_file_is_one_error_line(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def _one_answer_set(root, teacher_overall: str) -> None:
    (root / "answers").mkdir()
    (root / "answers" / "M02.04-c--1.toml").write_text('cause = "synchronization"\n')
    (root / "teacher_overall.tsv").write_text(f"file\toverall\nM02.04-c--1.toml\t{teacher_overall}\n")
    (root / "teacher.tsv").write_text("file\tpart\tscore\nM02.04-c--1.toml\tcause\t0\n")


def test_a_teacher_score_corrected_by_hand_replaces_the_teachers_and_is_said(tmp_path, capsys):
    _one_answer_set(tmp_path, "0.0")
    (tmp_path / "CORRECTIONS.tsv").write_text("file\tpart\tteacher\tcorrected\twhy\n"
                                              "M02.04-c--1.toml\tcause\t0\t1\tthe trace's idle is the syncs'\n")
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("1 teacher scores corrected")
    assert out[2].startswith("parts: 1 of 1 within")          # the part now agrees with the corrected score
    assert main([str(tmp_path), "--raw"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("parts: 0 of 1 within")


def test_the_held_back_slice_is_chosen_by_the_files_name_alone(tmp_path, capsys):
    from tools.grader_agreement import held_back

    _one_answer_set(tmp_path, "0.3")
    held = held_back("M02.04-c--1.toml")
    assert main([str(tmp_path), "--slice", "held"]) == 0
    assert capsys.readouterr().out.startswith(f"files: {int(held)} of {int(held)} " if held else "files: 0 of 0")
