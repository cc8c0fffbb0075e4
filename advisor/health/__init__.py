"""The long run's health: what the doctor finds wrong with the caches and the machine."""
