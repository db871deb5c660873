"""The fix attach gives when the kernel refuses py-spy: the narrowest right first."""

from ddpdoctor.attach.sample import PTRACE_FIX


def test_the_ptrace_fix_offers_root_for_one_command_before_a_machine_wide_sysctl_and_its_way_back():
    # Once the advice led with lowering kernel.yama.ptrace_scope, which loosens tracing for every
    # process of the machine; sudo for the one command is the narrow right.
    assert PTRACE_FIX.index("sudo ddpdoctor attach") < PTRACE_FIX.index("ptrace_scope=0")
    assert "back after" in PTRACE_FIX and "machine-wide" in PTRACE_FIX
    assert "SYS_PTRACE" in PTRACE_FIX
