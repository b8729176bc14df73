"""Evaluation metrics."""

from .dependency import (AttachmentScores, attach_left_heads, attach_right_heads, attachment_scores,
                         directed_accuracy, random_projective_heads, undirected_accuracy)
from .parsing import BracketScores, bracket_scores, brackets, parsing_report
from .segmentation import (PrecisionRecall, SegmentationScores, precision_recall_f1, segmentation_report,
                           segmentation_scores, word_boundaries, word_spans)
from .speech import (BoundaryScores, boundary_scores, frame_boundaries, frame_labels, normalized_mutual_info,
                     phone_boundaries, unit_purity, units_report)
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
    "BracketScores",
    "bracket_scores",
    "brackets",
    "parsing_report",
    "PrecisionRecall",
    "SegmentationScores",
    "precision_recall_f1",
    "segmentation_report",
    "segmentation_scores",
    "word_boundaries",
    "word_spans",
    "AttachmentScores",
    "attach_left_heads",
    "attach_right_heads",
    "attachment_scores",
    "directed_accuracy",
    "random_projective_heads",
    "undirected_accuracy",
    "BoundaryScores",
    "boundary_scores",
    "frame_boundaries",
    "frame_labels",
    "normalized_mutual_info",
    "phone_boundaries",
    "unit_purity",
    "units_report",
    "VMeasure",
    "accuracy",
    "contingency",
    "many_to_one",
    "one_to_one",
    "tagging_report",
    "v_measure",
    "variation_of_information",
]
