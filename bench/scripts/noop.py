"""Does nothing: accel-launch must refuse the backend before this ever runs."""
