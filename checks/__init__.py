"""ddpdoctor's checks, one module per check. Installed as `ddpdoctor.checks`."""
