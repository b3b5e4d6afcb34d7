"""Charts of the research results: the experiments, the positional-encoding lab, the reasoning lab.

Draw one with `cotplan.charts.chart(result)`; its table `cotplan.charts.CHARTS` names the
function here for each result class. Nothing below the charts imports them.
"""

__all__: list[str] = []
