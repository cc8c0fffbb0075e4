"""One reader per external format: what a tool prints or the kernel exposes, parsed into
dataclasses. Readers run at most the one command they read; unit tests feed them outputs
captured in the lab (tests/fixtures/)."""
