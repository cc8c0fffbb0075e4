"""The recommendation: backend, cache size, mode and tunables, each with its reasons.

Pure domain code, in stages (docs/recommend.md has the long form):

- :mod:`advisor.advice.model`: what is asked (:class:`Inputs`: probes, a workload analysis or a
  declared class, the platform, what the user accepts) and what is answered
  (:class:`Recommendation`);
- :mod:`advisor.advice.profile`: the workload as the advice reads it, measured or modelled;
- :mod:`advisor.advice.traits`: what the advice knows of each backend, extending the registry's
  descriptor, with the thesis's tables (advisor/advice/data/thesis.toml, beside findings.toml);
- :mod:`advisor.advice.choice`: the choice, a decision of codes and numbers;
- :mod:`advisor.advice.explain`: the decision in words, each reason citing finding ids from
  advisor/advice/data/findings.toml, the next steps as actions each front end words.

Nothing here runs a command; :mod:`advisor.advice.facts` gathers the inputs.
"""

from __future__ import annotations

from advisor.advice.choice import decide
from advisor.advice.explain import explain
from advisor.advice.model import Inputs, Recommendation


def recommend(inp: Inputs) -> Recommendation:
    """The recommendation for these inputs; RecommendError says which input is missing or wrong."""
    return explain(decide(inp))
