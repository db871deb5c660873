"""ddpdoctor: find out why a PyTorch DDP run hangs, crashes or crawls."""

__version__ = "0.1.0"
