"""cachewise: an advisor for SSD caches in front of hard disks."""

__version__ = "0.1.0"
