package outbox

import (
	"encoding/json"
	"fmt"
)

// ReasonSpamSuspected marks a submission whose spam signals (Submission.Signals) reached
// its form's quarantine or spam threshold (docs/design.md, "Spam signals").
const ReasonSpamSuspected = "spam_suspected"

// Signal is one thing intake noticed about a post that bears on whether it is spam: a
// defence that fired, a time trap that was too fast, a proof of work that held. Weight is
// what it adds to the post's score (zero for a signal kept for the record, such as a proof
// of work that passed). Evidence is a short operator-facing note ("posted 1.2s after the
// token was issued"); it never holds a secret (a key, a token), and visitor data only
// where the submission itself is shown.
type Signal struct {
	Name     string `json:"name"`
	Weight   int    `json:"weight"`
	Evidence string `json:"evidence,omitempty"`
}

// Score is the sum of the signals' weights.
func Score(signals []Signal) int {
	n := 0
	for _, s := range signals {
		n += s.Weight
	}
	return n
}

// Score is the sum of the submission's signal weights.
func (s *Submission) Score() int { return Score(s.Signals) }

// ReceivedSignals reads the score and signals a store kept with a submission: they travel
// in its submission.received event's data (outbox/internal/acceptprep), which costs no
// row beyond the one every submission writes. A submission stored without signals (or
// before they existed) gives 0 and none.
func ReceivedSignals(data []byte) (int, []Signal, error) {
	var d struct {
		Score   int      `json:"score"`
		Signals []Signal `json:"signals"`
	}
	if len(data) == 0 {
		return 0, nil, nil
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return 0, nil, fmt.Errorf("read spam signals: %w", err)
	}
	return d.Score, d.Signals, nil
}
