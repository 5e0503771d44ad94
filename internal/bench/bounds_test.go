package bench

import "testing"

func TestLoadBoundsClients(t *testing.T) {
	for _, n := range []int{0, -1, MaxClients + 1, 1_000_000} {
		if err := (Load{Clients: n, Requests: 10}).Validate(); err == nil {
			t.Errorf("--clients %d accepted", n)
		}
	}
	if err := (Load{Clients: MaxClients, Requests: 10}).Validate(); err != nil {
		t.Errorf("--clients %d (the maximum): %v", MaxClients, err)
	}
}
