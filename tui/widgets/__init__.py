"""Widgets, one package per tab."""
