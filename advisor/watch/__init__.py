"""Watching caches work: samples, derived figures, flush progress, exports."""
