package claimorder

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func TestSortIsDueTimeThenTheIDsTextOrder(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var ds []outbox.Delivery
	for i := range 200 {
		ds = append(ds, outbox.Delivery{ID: uuid.New(), NextAttemptAt: t0.Add(time.Duration(i%3) * time.Second)})
	}
	rand.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
	want := slices.Clone(ds)
	slices.SortFunc(want, func(a, b outbox.Delivery) int {
		if c := a.NextAttemptAt.Compare(b.NextAttemptAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID.String(), b.ID.String())
	})
	Sort(ds)
	for i := range ds {
		if ds[i].ID != want[i].ID {
			t.Fatalf("position %d: %s due %v, want %s due %v", i, ds[i].ID, ds[i].NextAttemptAt, want[i].ID, want[i].NextAttemptAt)
		}
	}
}
