"""The record schema (probe/records/telemetry.py): what readers rely on being declared."""

from dataclasses import fields

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RankRun
from tests.helpers.telemetry_builders import site


def test_sited_names_every_record_type_that_declares_a_site():
    declared = {cls for cls in tm.RECORD_TYPES.values() if "site" in {f.name for f in fields(cls)}}
    assert set(tm.SITED) == declared


def test_a_rank_s_sites_are_those_its_records_name():
    records = [tm.Collective(1.0, "WORLD", None, 0, "all_reduce", [[3]], ["float32"], 0, site(57)),
               tm.Collective(1.1, "WORLD", None, 1, "all_reduce", [[3]], ["float32"], 0, None),
               tm.Step(1.2, 1, 1, 1, {})]
    assert list(RankRun(0, records).sites()) == [site(57)]
