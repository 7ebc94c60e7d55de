package feedback

import (
	"encoding/json"
	"errors"
	"net/http"
)

// httpError is a refusal with the status the sender should see. Senders retry on 5xx
// (and SNS/Svix on any non-2xx), so statuses are chosen for what a retry can achieve:
// 4xx for messages that will never be good, 5xx for our own trouble.
type httpError struct {
	status int
	msg    string
	err    error
}

func (e *httpError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *httpError) Unwrap() error { return e.err }

func refuse(status int, msg string, err error) error {
	return &httpError{status: status, msg: msg, err: err}
}

// answer is the JSON body of a 2xx.
type answer struct {
	OK         bool   `json:"ok"`
	DeliveryID string `json:"delivery_id,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
	Duplicate  bool   `json:"duplicate,omitempty"`
	Ignored    string `json:"ignored,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers err: its own status for an httpError, 500 otherwise. The message
// names what failed, never the payload.
func writeError(w http.ResponseWriter, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{status: http.StatusInternalServerError, msg: "internal error"}
	}
	writeJSON(w, he.status, map[string]string{"error": he.msg})
}
