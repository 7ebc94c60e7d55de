// Package file is the development email provider: instead of sending, it writes each
// email as an RFC 5322 .eml file into a folder, where any mail client can open it. It is
// the embedded example's default, so a form works end to end with no account anywhere.
// The message is built by providers/internal/mimemsg, byte for byte what SMTP sends.
package file

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/mimemsg"
)

// Config configures the file provider.
type Config struct {
	// Dir receives the .eml files; created on first send.
	Dir string
	// From is the sender, e.g. "Example Forms <forms@example.com>".
	From string
	// Now stamps the Date header; default time.Now.
	Now func() time.Time
}

// Provider writes emails to Config.Dir as <delivery id>.eml.
type Provider struct {
	dir  string
	from *mail.Address
	now  func() time.Time
	// dirSync makes the renames durable, one folder sync for all the sends that renamed
	// while the previous one ran.
	dirSync dirSyncer
}

// New checks cfg and returns the provider. It touches no file: Caddy provisions modules
// for `caddy validate` too.
func New(cfg Config) (*Provider, error) {
	if cfg.Dir == "" {
		return nil, errors.New("file email provider: a folder is required")
	}
	from, err := mimemsg.ParseFrom(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("file email provider: from %q: %w", cfg.From, err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Provider{dir: cfg.Dir, from: from, now: now}, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return "file" }

// Path is where the message with this id is written.
func (p *Provider) Path(id string) string { return filepath.Join(p.dir, id+".eml") }

// Send writes m as <m.ID>.eml. The file is written to a temporary name, synced and
// renamed into place, so a reader never sees half a message and a retry of the same
// delivery replaces its file instead of adding a second one.
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	if err := ctx.Err(); err != nil {
		return providers.Result{Provider: p.Name()}, &providers.Error{Class: providers.Temporary, Err: err}
	}
	if m.ID == "" || strings.ContainsAny(m.ID, `/\`+"\x00") || m.ID == "." || m.ID == ".." {
		return p.permanent("bad_id", fmt.Errorf("message id %q cannot name a file", m.ID))
	}
	if m.Channel != "" && m.Channel != "email" {
		return p.permanent("wrong_channel", fmt.Errorf("the file provider sends email, not %s", m.Channel))
	}
	built, err := mimemsg.Build(p.from, m, p.now())
	if err != nil {
		return p.permanent("bad_message", err)
	}
	if err := p.writeAtomic(m.ID+".eml", built.Raw); err != nil {
		return providers.Result{Provider: p.Name()}, &providers.Error{Class: providers.Temporary, Failover: true,
			Err: fmt.Errorf("write .eml: %w", err)}
	}
	return providers.Result{Provider: p.Name(), MessageID: built.MessageID}, nil
}

func (p *Provider) permanent(code string, err error) (providers.Result, error) {
	return providers.Result{Provider: p.Name()}, &providers.Error{Class: providers.Permanent, Code: code, Err: err}
}

// writeAtomic writes data to p.dir/name through a synced temporary file and a rename,
// then syncs the folder so the rename itself survives a crash.
func (p *Provider) writeAtomic(name string, data []byte) error {
	dir := p.dir
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o640); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	return p.dirSync.sync(dir)
}

// dirSyncer shares folder syncs between concurrent sends: a sync makes durable every
// rename done before it began, so a send that renamed while one was running waits for
// the next, which then serves every send that arrived meanwhile. With the worker's sends
// in flight together, one folder sync per mail was a second fsync per mail.
type dirSyncer struct {
	mu      sync.Mutex
	running bool
	waiting []chan error
	// count, when set, is called once per folder sync; each makes every send sync the
	// folder itself, as before the sharing (tests and benchmarks).
	count func()
	each  bool
	// joined, when set, is called as each send joins the queue (tests).
	joined func()
}

// sync returns once a sync of dir that began after the call has finished.
func (s *dirSyncer) sync(dir string) error {
	done := make(chan error, 1)
	s.mu.Lock()
	if s.each {
		s.mu.Unlock()
		return syncDir(dir)
	}
	s.waiting = append(s.waiting, done)
	if s.joined != nil {
		s.joined()
	}
	if !s.running {
		s.running = true
		go s.run(dir)
	}
	s.mu.Unlock()
	return <-done
}

// run syncs dir for the waiting sends, again while more arrived during a sync.
func (s *dirSyncer) run(dir string) {
	for {
		s.mu.Lock()
		batch := s.waiting
		s.waiting = nil
		if len(batch) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		count := s.count
		s.mu.Unlock()
		if count != nil {
			count()
		}
		err := syncDir(dir)
		for _, c := range batch {
			c <- err
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

var _ providers.Provider = (*Provider)(nil)
