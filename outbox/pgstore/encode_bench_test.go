package pgstore

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// These benchmarks measure the CPU the group-commit paths spend before anything reaches
// the server: building a set statement's parameters from a batch and encoding them the
// way pgx does for a cached statement (pgx.ExtendedQueryBuilder with the parameters'
// types). The DB-backed ones are in bench_test.go.

const benchBatch = 64 // items per group commit, a busy intake's batch

// benchItems builds n submissions like the intake's: a few fields, meta, a key on every
// other one, an email and a webhook delivery each.
func benchItems(n int) []outbox.AcceptItem {
	items := make([]outbox.AcceptItem, n)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range items {
		sub := &outbox.Submission{
			ID: uuid.Must(uuid.NewV7()), Form: "contact", Status: outbox.SubmissionAccepted,
			Data: outbox.Fields{{Name: "name", Value: "Ada Lovelace"}, {Name: "email", Value: "ada@example.com"},
				{Name: "message", Value: "Hello, a question about the engine."}},
			Meta:        outbox.Meta{Origin: "https://example.com", UserAgent: "bench/1.0", ClientIP: "hmac:4f2a"},
			ContentHash: "sha256:" + strings.Repeat("ab", 32),
			CreatedAt:   at,
		}
		if i%2 == 0 {
			sub.IdempotencyKey = fmt.Sprintf("key-%d", i)
		}
		email, _ := json.Marshal(outbox.Payload{To: "sales@example.com", Subject: "New contact submission", Text: "name: Ada Lovelace\n"})
		hook, _ := json.Marshal(outbox.Payload{URL: "https://hooks.example.com/form"})
		items[i] = outbox.AcceptItem{Submission: sub, Deliveries: []outbox.Delivery{
			{ID: uuid.Must(uuid.NewV7()), Route: "sales", Channel: outbox.ChannelEmail, Recipient: "sales@example.com", MaxAttempts: 8, Payload: email},
			{ID: uuid.Must(uuid.NewV7()), Route: "hook", Channel: outbox.ChannelWebhook, Recipient: "https://hooks.example.com/form", MaxAttempts: 8, Payload: hook},
		}}
	}
	return items
}

// benchCompletions builds n planned completions: most sent, every fourth one dead with
// its event.
func benchCompletions(n int) []outbox.Completion {
	cs := make([]outbox.Completion, n)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range cs {
		c := outbox.Completion{
			DeliveryID: uuid.Must(uuid.NewV7()), LeaseToken: uuid.NewString(), Status: outbox.DeliverySent,
			NextAttemptAt: now, Provider: "smtp", ProviderMessageID: "<m@example.com>", Now: now,
			Attempt: outbox.Attempt{Attempt: 1, Provider: "smtp", StartedAt: now, FinishedAt: now,
				Outcome: outbox.OutcomeSent, HTTPStatus: 250, ProviderMessageID: "<m@example.com>"},
		}
		if i%4 == 3 {
			c.Status, c.LastError = outbox.DeliveryDead, "550 no such user"
			c.Attempt.Outcome, c.Attempt.Error = outbox.OutcomePermanent, "550 no such user"
			c.Event = &outbox.Event{Kind: outbox.EventDeliveryDead, DeliveryID: c.DeliveryID, Data: json.RawMessage(`{"error":"550"}`), At: now}
		}
		cs[i] = c
	}
	return cs
}

func allLive(n int) []int {
	live := make([]int, n)
	for i := range live {
		live[i] = i
	}
	return live
}

var castRE = regexp.MustCompile(`\$(\d+)(?:::(\w+)(\[\])?)?`)

// paramOIDs reads the types of query's parameters from their casts ($n::type[]) as the
// server would infer them; a parameter that is never cast is taken as text.
func paramOIDs(tb testing.TB, m *pgtype.Map, query string) []uint32 {
	tb.Helper()
	names := map[int]string{}
	n := 0
	for _, g := range castRE.FindAllStringSubmatch(query, -1) {
		k, _ := strconv.Atoi(g[1])
		n = max(n, k)
		if g[2] == "" {
			continue
		}
		name := g[2]
		if name == "int" {
			name = "int4"
		}
		if g[3] != "" {
			name = "_" + name
		}
		names[k] = name
	}
	oids := make([]uint32, n)
	for k := range oids {
		oids[k] = pgtype.TextOID
		if name, ok := names[k+1]; ok {
			t, ok := m.TypeForName(name)
			if !ok {
				tb.Fatalf("$%d: unknown type %s", k+1, name)
			}
			oids[k] = t.OID
		}
	}
	return oids
}

// encoder encodes one statement's parameters as pgx does for a cached statement.
type encoder struct {
	m   *pgtype.Map
	sd  *pgconn.StatementDescription
	eqb pgx.ExtendedQueryBuilder
}

func newEncoder(tb testing.TB, query string) *encoder {
	m := pgtype.NewMap()
	return &encoder{m: m, sd: &pgconn.StatementDescription{SQL: query, ParamOIDs: paramOIDs(tb, m, query)}}
}

func (e *encoder) encode(tb testing.TB, args []any) {
	if err := e.eqb.Build(e.m, e.sd, args); err != nil {
		tb.Fatal(err)
	}
}

// acceptSetParams is what AcceptBatch builds from items for acceptSetSQL.
func acceptSetParams(tb testing.TB, items []outbox.AcceptItem, live []int) []any {
	rows := make([]acceptRow, len(items))
	for _, i := range live {
		r, err := newAcceptRow(items[i])
		if err != nil {
			tb.Fatal(err)
		}
		rows[i] = r
	}
	return newAcceptColumns(rows, live).params()
}

// completeSetParams is what CompleteBatch builds from planned completions for
// completeSetSQL.
func completeSetParams(cs []outbox.Completion, live []int) []any {
	cols := newCompleteColumns(len(live))
	for _, i := range live {
		cols.add(cs[i])
	}
	return cols.args()
}

// BenchmarkAcceptSetColumns is AcceptBatch's CPU before the round trip: encoding each
// item, building acceptSetSQL's columns and encoding them.
func BenchmarkAcceptSetColumns(b *testing.B) {
	items, live := benchItems(benchBatch), allLive(benchBatch)
	e := newEncoder(b, acceptSetSQL)
	for b.Loop() {
		e.encode(b, acceptSetParams(b, items, live))
	}
}

// BenchmarkAcceptSetEncode is pgx's share of it: encoding built columns.
func BenchmarkAcceptSetEncode(b *testing.B) {
	items, live := benchItems(benchBatch), allLive(benchBatch)
	e := newEncoder(b, acceptSetSQL)
	args := acceptSetParams(b, items, live)
	for b.Loop() {
		e.encode(b, args)
	}
}

// BenchmarkCompleteSetColumns is CompleteBatch's CPU before the round trip: building
// completeSetSQL's columns and encoding them.
func BenchmarkCompleteSetColumns(b *testing.B) {
	cs, live := benchCompletions(benchBatch), allLive(benchBatch)
	e := newEncoder(b, completeSetSQL)
	for b.Loop() {
		e.encode(b, completeSetParams(cs, live))
	}
}

// BenchmarkCompleteSetEncode is pgx's share of it: encoding built columns.
func BenchmarkCompleteSetEncode(b *testing.B) {
	cs, live := benchCompletions(benchBatch), allLive(benchBatch)
	e := newEncoder(b, completeSetSQL)
	args := completeSetParams(cs, live)
	for b.Loop() {
		e.encode(b, args)
	}
}
