"""Evaluation metrics."""

from .tagging import (
    VMeasure,
    accuracy,
    contingency,
    many_to_one,
    one_to_one,
    tagging_report,
    v_measure,
    variation_of_information,
)

__all__ = [
    "VMeasure",
    "accuracy",
    "contingency",
    "many_to_one",
    "one_to_one",
    "tagging_report",
    "v_measure",
    "variation_of_information",
]
