from ddpdoctor.core.findings import Finding, Location, Severity, parse_codes


def make(severity: Severity, code: str = "DDP101") -> Finding:
    return Finding(code, severity, "t", "m", "h", ranks=[1, 0], hosts=["a"],
                   location=Location("train.py", 57), evidence={"n": 1})


def test_finding_json_matches_the_documented_schema():
    data = make(Severity.ERROR).to_dict()
    assert set(data) == {"code", "severity", "title", "message", "hint", "ranks", "hosts",
                         "location", "evidence"}
    assert data["severity"] == "error"
    assert data["location"] == {"file": "train.py", "line": 57}
    assert Finding.from_dict(data) == make(Severity.ERROR)


def test_ignore_codes_accept_commas_repeats_and_lowercase():
    assert parse_codes(["ddp602,DDP603", " DDP101 "]) == {"DDP602", "DDP603", "DDP101"}
