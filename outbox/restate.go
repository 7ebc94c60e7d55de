package outbox

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// RestatePayload returns a delivery's payload with the submission's status in its
// request body replaced by status: the top-level "status" member of the body that
// intake rendered (intake/render.go, webhookBody). Everything else, every byte of the
// body's other members and their order included, is kept, so the receiver gets the
// message that was planned, told as the submission is now. changed is false when the
// body has no status member or already says status; the payload is then returned as
// it is. A release calls it in its own transaction (docs/design.md, "Told as it is
// when sent"), so the worker's send path reads nothing more than the claimed row.
func RestatePayload(payload []byte, status SubmissionStatus) (out []byte, changed bool, err error) {
	var p Payload
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, false, fmt.Errorf("decode payload: %w", err)
	}
	if len(p.Body) == 0 {
		return payload, false, nil
	}
	body, changed, err := setBodyStatus(p.Body, status)
	if err != nil || !changed {
		return payload, false, err
	}
	p.Body = body
	return p.AppendJSON(nil), true, nil
}

// setBodyStatus replaces the value of the body's top-level "status" member. A field
// named status in the visitor's data is a member of "data", one level down, and is
// never touched.
func setBodyStatus(body []byte, status SubmissionStatus) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false, fmt.Errorf("body is not a JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, false, fmt.Errorf("body member: %w", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false, fmt.Errorf("body member %v: %w", key, err)
		}
		if key != "status" {
			continue
		}
		want, _ := json.Marshal(string(status)) // a string: cannot fail
		if bytes.Equal(v, want) {
			return body, false, nil
		}
		end := int(dec.InputOffset())
		start := end - len(v)
		out := make([]byte, 0, len(body)-len(v)+len(want))
		out = append(append(append(out, body[:start]...), want...), body[end:]...)
		return out, true, nil
	}
	return body, false, nil
}
