// What both pages do with FACTOR_WORDS (defined just above, from the
// server's texts): a step's score and its factors in plain words.

/** Factors whose words tell their value (rated up or down), not which way
 * they moved the score (as `Factor::in_words` in Rust). */
const BY_VALUE = new Set(["document_history"]);

/** `x` with its sign, to two decimals. */
function signed(x) {
  return (x >= 0 ? "+" : "−") + Math.abs(x).toFixed(2);
}

/** The score of the last of `steps` that has factors, or null. */
function lastScore(steps) {
  const scored = (steps || []).filter((s) => s.confidence && (s.confidence.contributions || []).length);
  return scored.length ? scored[scored.length - 1].confidence : null;
}

/** The contributions that moved `score`, largest first (a term of 0 moved
 * nothing and is left out). */
function effects(score) {
  return score.contributions
    .filter((c) => Number.isFinite(c.term) && c.term !== 0)
    .sort((a, b) => Math.abs(b.term) - Math.abs(a.term));
}

/** Contribution `c` in plain words in language `code` (English when it
 * has none), as it `raised` the score or lowered it; a factor without
 * words reads "{factor} raised it". */
function factorText(code, c, raised) {
  const words = FACTOR_WORDS[code] || FACTOR_WORDS.en;
  const up = BY_VALUE.has(c.factor) ? c.value > 0 : raised;
  const pair = words.factors[c.factor] || FACTOR_WORDS.en.factors[c.factor];
  if (Array.isArray(pair)) return pair[up ? 0 : 1];
  return words.other[up ? 0 : 1].replace("{factor}", c.factor.replace(/_/g, " "));
}
