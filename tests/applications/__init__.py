"""Tests of the recipes in applications/, imported as `applications.<name>`."""
