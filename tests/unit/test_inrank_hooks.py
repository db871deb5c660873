"""The in-rank dispatcher (probe/inrank/hooks.py): one patch per entry point, its hooks in the
declared order, a failing hook switched off without the script noticing, the original called
exactly once, and the original back after unpatching."""

from types import SimpleNamespace

import pytest

from ddpdoctor.probe.inrank import hooks


def _entry(order=("outer", "middle", "inner"), passes=()):
    calls = []

    def save(obj, path=None):
        calls.append(("original", obj, path))
        return f"saved {obj}"

    place = SimpleNamespace(save=save, alias=save)
    entry = hooks.EntryPoint("torch.save", ("place:save", "place:alias"), order, passes,
                             resolve=lambda target: (place, target.split(":")[1]))
    return entry, place, calls, save


@pytest.fixture
def failures(monkeypatch):
    seen = []
    monkeypatch.setattr(hooks, "on_failure", lambda entry, instrument, exc: seen.append((entry, instrument, exc)))
    return seen


def _tracing(name, calls):
    def hook(call, *args, **kwargs):
        calls.append(f"{name} before")
        result = call(*args, **kwargs)
        calls.append(f"{name} after")
        return result
    return hook


def test_hooks_run_in_the_declared_order_whatever_order_they_registered_in():
    entry, place, calls, _ = _entry()
    entry.add("inner", _tracing("inner", calls))
    entry.add("outer", _tracing("outer", calls))
    entry.add("middle", _tracing("middle", calls))
    assert place.save("w") == "saved w"
    assert calls == ["outer before", "middle before", "inner before", ("original", "w", None),
                     "inner after", "middle after", "outer after"]


def test_every_alias_gets_the_one_patch_and_it_looks_like_the_original():
    entry, place, _, original = _entry()
    entry.add("outer", lambda call, *a, **k: call(*a, **k))
    assert place.save is place.alias and place.save is not original
    assert place.save.__wrapped__ is original and place.save.__code__.co_name == "save"


def test_a_hook_may_hand_the_call_other_arguments():
    entry, place, calls, _ = _entry()
    entry.add("inner", lambda call, obj, path=None: call(obj, "cpu"))
    entry.add("outer", _tracing("outer", calls))
    place.save("w", path="cuda")
    assert ("original", "w", "cpu") in calls


def test_a_hook_raising_before_the_call_is_switched_off_and_the_original_runs_once(failures):
    entry, place, calls, _ = _entry()

    def broken(call, *args, **kwargs):
        raise KeyError("bug")

    entry.add("middle", broken)
    entry.add("outer", _tracing("outer", calls))
    assert place.save("w") == "saved w"
    assert calls.count(("original", "w", None)) == 1
    assert [(e, i) for e, i, _ in failures] == [("torch.save", "middle")]
    calls.clear()
    place.save("x")  # off from here on: not called again, not said again
    assert calls == ["outer before", ("original", "x", None), "outer after"] and len(failures) == 1


def test_a_hook_raising_after_the_call_keeps_its_result_and_never_calls_again(failures):
    entry, place, calls, _ = _entry()

    def broken_after(call, *args, **kwargs):
        call(*args, **kwargs)
        raise ValueError("bug after")

    entry.add("inner", broken_after)
    assert place.save("w") == "saved w"
    assert calls == [("original", "w", None)] and failures[0][1] == "inner"


def test_a_hook_calling_through_twice_is_a_bug_and_the_original_still_ran_once(failures):
    entry, place, calls, _ = _entry()
    entry.add("inner", lambda call, *a, **k: (call(*a, **k), call(*a, **k))[1])
    assert place.save("w") == "saved w"
    assert calls == [("original", "w", None)] and failures[0][1] == "inner"


def test_the_call_s_own_exception_reaches_the_script_unchanged_and_no_hook_is_blamed(failures):
    error = OSError("disk full")

    def save(obj, path=None):
        raise error

    place = SimpleNamespace(save=save)
    entry = hooks.EntryPoint("torch.save", ("place:save",), ("outer",), resolve=lambda target: (place, "save"))
    entry.add("outer", lambda call, *a, **k: call(*a, **k))
    with pytest.raises(OSError) as raised:
        place.save("w")
    assert raised.value is error and failures == []


def test_an_exception_a_hook_raises_on_purpose_passes_through(failures):
    entry, place, calls, _ = _entry(passes=(StopIteration,))

    def cut(call, *args, **kwargs):
        raise StopIteration

    entry.add("inner", cut)
    with pytest.raises(StopIteration):
        place.save("w")
    assert failures == [] and calls == []


def test_an_undeclared_instrument_is_refused():
    entry, _, _, _ = _entry()
    with pytest.raises(ValueError, match="not declared"):
        entry.add("stranger", lambda call, *a, **k: call(*a, **k))


def test_unpatching_puts_the_original_back_everywhere():
    entry, place, calls, original = _entry()
    entry.add("outer", _tracing("outer", calls))
    entry.unpatch()
    assert place.save is original and place.alias is original
    place.save("w")
    assert calls == [("original", "w", None)]


def test_a_class_method_is_patched_on_its_class_and_restored_from_it():
    class Loader:
        def __iter__(self):
            return iter([1, 2])

    original = Loader.__dict__["__iter__"]
    entry = hooks.EntryPoint("Loader.__iter__", ("m:Loader.__iter__",), ("a",),
                             resolve=lambda target: (Loader, "__iter__"))
    seen = []
    entry.add("a", lambda call, self: (seen.append(self), call(self))[1])
    loader = Loader()
    assert list(loader) == [1, 2] and seen == [loader]
    entry.unpatch()
    assert Loader.__dict__["__iter__"] is original


def test_the_declared_entry_points_name_only_instruments_that_exist():
    from pathlib import Path

    inrank = Path(hooks.__file__).parent
    for name, (targets, order, _) in hooks.ORDER.items():
        assert targets and order, name
        for instrument in order:
            assert (inrank / f"{instrument}.py").is_file(), (name, instrument)
            assert f'"{name}", "{instrument}"' in (inrank / f"{instrument}.py").read_text(), (name, instrument)


def test_arguments_that_do_not_fit_torch_s_signature_are_not_bound_and_pass_on_as_they_came():
    import inspect

    def init_process_group(backend=None, *, rank=-1):
        return backend

    signature = inspect.signature(init_process_group)
    assert hooks.bind(signature, ("gloo",), {"rank": 1}).arguments == {"backend": "gloo", "rank": 1}
    assert hooks.bind(signature, ("gloo", "extra"), {}) is None
    assert hooks.bind(signature, (), {"unknown": 1}) is None
