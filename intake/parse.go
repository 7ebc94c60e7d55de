package intake

import (
	"errors"
	"net/http"
	"time"
)

// Parse reads and checks one request. now stamps CreatedAt. It returns a *Result, or a
// *RequestError for requests that cannot become a submission at all.
func (c *Config) Parse(r *http.Request, now time.Time) (*Result, error) {
	return nil, errors.New("intake: Parse not implemented yet")
}
