"""The report every command ends in, and the renderers that turn it into text."""
