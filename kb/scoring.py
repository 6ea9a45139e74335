"""The hand-set scoring constants, in one place: how rule hits, semantic and lexical similarity, the
conditions and the release are fused into one confidence, and the thresholds every surface reads.

They were set by hand on the self-made eval sets. They still rank the candidates and drop the weak
ones, but the confidence a user sees is the fitted calibration's (``kb/data/calibration.json``, see
:mod:`kb.calibration`), and so are the match/possible thresholds; ``MATCH_THRESHOLD`` decides only when no
calibration is shipped, and the ask path's thresholds below are on the fused score (``Match.score``).
Nothing else in the package holds a scoring number.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- verdicts

#: A fused confidence from here is a "match" (a claim); below, a "possible" near miss.
MATCH_THRESHOLD = 0.70
#: Candidates below this fused confidence are not reported at all.
POSSIBLE_THRESHOLD = 0.40
#: Rule confidence at or above which the semantic layer is not consulted at all (and never imported).
RULES_DECISIVE = 0.85

# --------------------------------------------------------------------------- rule hits

#: Weight of a fired metric signature: a NaN/Inf value, a level held, a trend.
METRIC_NONFINITE_WEIGHT = 0.9
METRIC_LEVEL_WEIGHT = 0.85
METRIC_TREND_WEIGHT = 0.75
#: Each further distinct sign of the same entry (up to two more) adds this share of what is left.
RULE_SUPPORT_SHARE = 0.3
#: No rule score reaches certainty.
RULE_SCORE_CAP = 0.99

# --------------------------------------------------------------------------- retrieval

#: Cosine similarity (normalised MiniLM vectors) below which a hit says nothing, and from which it is full.
SEMANTIC_FLOOR = 0.30
SEMANTIC_FULL = 0.75
#: The semantic confidence's weight in retrieval, and lexical agreement's (only beside a semantic hit).
SEMANTIC_WEIGHT = 0.62
LEXICAL_WEIGHT = 0.12
#: Retrieval alone claims at most this much: a question may be answered by similarity alone, a log with
#: errors in it needs a rule (near misses, the same library and another failure, read alike).
RETRIEVAL_CAP_QUESTION = 0.74
RETRIEVAL_CAP_LOG = 0.62
#: With a rule hit, retrieval adds this share of its score to what the rule leaves.
RETRIEVAL_SUPPORT_SHARE = 0.5

# --------------------------------------------------------------------------- conditions and releases

#: Each condition that fails for the input multiplies the confidence by this.
CONDITION_FAILS_FACTOR = 0.8
#: Each condition that holds adds this share of what is left.
CONDITION_HOLDS_SHARE = 0.02
#: A confidence after the conditions never exceeds this.
CONDITION_CAP = 0.99
#: The input's verl release is outside the entry's range: the confidence is multiplied by this.
OUTSIDE_RANGE_FACTOR = 0.6
#: A known bug on a release that has its fix: multiplied by this and capped, a near miss at most...
FIXED_RELEASE_FACTOR = 0.6
FIXED_RELEASE_CAP = 0.6
#: ... unless a symptom this exact fired (a partial fix, a mixed install).
EXACT_SYMPTOM = 0.95

# --------------------------------------------------------------------------- provenance

#: A near miss at most: where generic entries (unknown provenance) and every entry (another stack) end up;
#: confidences above it are squeezed into [cap - band, cap], their order kept.
NEAR_MISS_CAP = 0.66
NEAR_MISS_BAND = 0.06

# --------------------------------------------------------------------------- ask

#: A question in words is answered (not abstained on) from this confidence; a log needs a "match".
ANSWER_THRESHOLD = 0.45
#: Two entries closer than this are both cited ("another entry fits about as well").
ANSWER_MARGIN = 0.04
#: FAQ search hits below this fused score are not offered as "closest" when abstaining.
SEARCH_FLOOR = 0.45
