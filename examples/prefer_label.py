"""An out-of-tree Score plugin: prefer nodes carrying a label. Load it by dotted path in the config."""

from scheduler.framework import CycleState, NodeInfo, PodInfo


class PreferLabel:
    name = "PreferLabel"

    def __init__(self, args: dict[str, str], handle: object) -> None:
        self.label = args.get("label", "example.com/preferred")

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, None]:
        return (100 if self.label in node.labels else 0), None
