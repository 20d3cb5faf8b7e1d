package dlbridge

// The shared SWIG mapping of dlb_channel_pool_stats (dlbx_channel_pool_stats in
// generators/swig/dlbridge.i) refuses an array too short for the fields, before the core is
// asked; PoolStats always passes DLBX_POOL_STATS_FIELDS values, so only a direct call reaches it.

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

func TestPoolStatsMappingRefusesAShortArray(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sock", "channel.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	short := make([]int64, capi.DLBX_POOL_STATS_FIELDS-1)
	err = c.h.use(func(addr int64) error {
		_, err := check(capi.Dlbx_channel_pool_stats(addr, short))
		return err
	})
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusInvalidArgument ||
		e.Message != "the pool statistics need an array of 8 values" {
		t.Fatalf("a short array: %v", err)
	}
	for i, v := range short {
		if v != 0 {
			t.Errorf("value %d of a refused call was written: %d", i, v)
		}
	}
}
