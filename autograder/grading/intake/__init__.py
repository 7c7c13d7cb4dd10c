"""A class's submissions as they arrive: read safely, found, staged, repaired, scanned."""
