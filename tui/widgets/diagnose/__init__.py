"""The Diagnose tab."""
