"""Evaluation metrics."""

from .tagging import accuracy, contingency, many_to_one

__all__ = ["accuracy", "contingency", "many_to_one"]
