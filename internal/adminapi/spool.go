package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// adminReplayTimeout bounds one manual pass; the background replayer finishes the rest.
const adminReplayTimeout = 2 * time.Minute

// serveSpoolReplay runs one replay pass now instead of waiting for the replayer's tick.
// A pass stopped by the store answers 503 with what it did so far and the error.
func serveSpoolReplay(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	ctx, cancel := context.WithTimeout(r.Context(), adminReplayTimeout)
	defer cancel()
	rep, err := b.ReplaySpool(ctx)
	if errors.Is(err, ErrSpoolOff) {
		return apiError(http.StatusConflict, ErrSpoolOff)
	}
	ans := Replay{Stored: rep.Stored, Duplicates: rep.Duplicates, Segments: rep.Segments,
		Corrupt: rep.Corrupt, Remaining: rep.Remaining}
	status := http.StatusOK
	if err != nil {
		// The error names segment offsets and ids, never field values.
		ans.Error = err.Error()
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(ans)
}
