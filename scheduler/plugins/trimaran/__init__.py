"""Trimaran: load-aware placement from measured utilisation (scheduler-plugins v0.34.7 ``pkg/trimaran``):
TargetLoadPacking, LoadVariationRiskBalancing and LowRiskOverCommitment. docs/load-aware-scheduling.md."""

from scheduler.plugins.trimaran.loadvariationriskbalancing import LoadVariationRiskBalancing
from scheduler.plugins.trimaran.lowriskovercommitment import LowRiskOverCommitment
from scheduler.plugins.trimaran.targetloadpacking import TargetLoadPacking

__all__ = ["LoadVariationRiskBalancing", "LowRiskOverCommitment", "TargetLoadPacking"]
