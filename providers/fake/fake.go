// Package fake is an in-memory Provider for tests: it records every message it is asked
// to send and fails or blocks on cue.
package fake

import (
	"context"
	"sync"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Provider records each Send. It is safe for concurrent use.
type Provider struct {
	name string

	mu        sync.Mutex
	script    func(ctx context.Context, m providers.Message) error
	calls     map[string]int
	delivered map[string]int
	messages  []providers.Message
}

// New returns a fake provider reporting name (default "fake").
func New(name string) *Provider {
	if name == "" {
		name = "fake"
	}
	return &Provider{name: name, calls: map[string]int{}, delivered: map[string]int{}}
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return p.name }

// SetScript installs fn, called on every Send before it counts as delivered: a non-nil
// error fails that send (return a *providers.Error to choose its class); blocking in fn
// blocks the send, and fn should watch ctx like a real provider. nil removes the script.
func (p *Provider) SetScript(fn func(ctx context.Context, m providers.Message) error) {
	p.mu.Lock()
	p.script = fn
	p.mu.Unlock()
}

// Fail is a shorthand for a script that fails every send for which fn returns an error.
func (p *Provider) Fail(fn func(m providers.Message) error) {
	p.SetScript(func(_ context.Context, m providers.Message) error { return fn(m) })
}

// Send implements providers.Provider.
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	p.mu.Lock()
	p.calls[m.ID]++
	script := p.script
	p.mu.Unlock()
	if script != nil {
		if err := script(ctx, m); err != nil {
			return providers.Result{Provider: p.name}, err
		}
	}
	p.mu.Lock()
	p.delivered[m.ID]++
	p.messages = append(p.messages, m)
	p.mu.Unlock()
	return providers.Result{Provider: p.name, MessageID: p.name + "-" + m.ID}, nil
}

// Calls is how many times a message with this id was handed to Send, failed or not.
func (p *Provider) Calls(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[id]
}

// Delivered is how many times a message with this id was sent successfully.
func (p *Provider) Delivered(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delivered[id]
}

// TotalCalls counts every Send, failed or not.
func (p *Provider) TotalCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.calls {
		n += c
	}
	return n
}

// TotalDelivered counts every successful Send.
func (p *Provider) TotalDelivered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.messages)
}

// Messages returns a copy of the successfully sent messages, in order.
func (p *Provider) Messages() []providers.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]providers.Message(nil), p.messages...)
}

// DeliveredCounts returns a copy of the per-id success counts.
func (p *Provider) DeliveredCounts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.delivered))
	for k, v := range p.delivered {
		out[k] = v
	}
	return out
}

var _ providers.Provider = (*Provider)(nil)
