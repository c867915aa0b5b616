"""Attention implementations."""
