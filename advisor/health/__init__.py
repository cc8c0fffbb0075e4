"""The long run's health: what ``cachewise doctor`` finds wrong with the caches and the machine."""
