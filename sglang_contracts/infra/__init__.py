"""What every stage of a run leans on: reading files safely, the error boundary."""
