"""The FAQ tab."""
