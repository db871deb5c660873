"""placeholder"""
from ddpdoctor.lint.fix.syntax import NoFix

CODE = {"sampler": "DDP802", "no_sync": "DDP805", "minlength": "DDP807"}["sampler"]


def propose(finding, parsed):
    raise NoFix("not yet")
