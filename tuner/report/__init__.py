"""Reports: the front, the leaderboard, failures, per-knob effects, plots."""

from tuner.report._accuracy import AccuracyGate
from tuner.report._accuracy import as_dict
from tuner.report._accuracy import final_table
from tuner.report._data import StudyData
from tuner.report._data import collect
from tuner.report._html import render
from tuner.report._regimes import regime_front_figure
from tuner.report._regimes import regime_front_table
from tuner.report._regimes import regime_front_title
from tuner.report._regimes import regime_records
from tuner.report._regimes import regime_table
from tuner.report._tables import display_table
from tuner.report._tables import front_table
from tuner.report._tables import leaderboard
from tuner.report._tables import pick_row
from tuner.report._tables import pick_sentence
from tuner.report._tables import pick_table
from tuner.report._tables import print_answer
from tuner.report._tables import print_tables


__all__ = [
           "AccuracyGate",
           "StudyData",
           "as_dict",
           "collect",
           "display_table",
           "final_table",
           "front_table",
           "leaderboard",
           "pick_row",
           "pick_sentence",
           "pick_table",
           "print_answer",
           "print_tables",
           "regime_front_figure",
           "regime_front_table",
           "regime_front_title",
           "regime_records",
           "regime_table",
           "render",
]
