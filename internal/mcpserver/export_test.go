package mcpserver

import "time"

// SubscriptionsHeld returns how many resources s counts as subscribed to
// downstream, and how many sessions hold subscriptions.
func SubscriptionsHeld(s *Server) (resources, sessions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs), len(s.sessSubs)
}

// HoldRefresh takes the lock a refresh of s's resource list runs under,
// until release is called.
func HoldRefresh(s *Server) (release func()) {
	s.refreshing.Lock()
	return s.refreshing.Unlock
}

// Refreshes returns how many refreshes of s's resource list have begun.
func Refreshes(s *Server) int64 { return s.refreshStarts.Load() }

// SetMaxLargeBodyBytes sets the bound on the large request bodies read at
// once until restore is called.
func SetMaxLargeBodyBytes(n int64) (restore func()) {
	old := maxLargeBodyBytes
	maxLargeBodyBytes = n
	return func() { maxLargeBodyBytes = old }
}

// SetHandOverWaits sets how long a session's POST waits for its turn and
// how long a message that has not started holds it after its POST ended,
// until restore is called.
func SetHandOverWaits(handOver, start time.Duration) (restore func()) {
	oldHandOver, oldStart := handOverWait, startWait
	handOverWait, startWait = handOver, start
	return func() { handOverWait, startWait = oldHandOver, oldStart }
}

// MaxQuietWait is maxQuietWait.
const MaxQuietWait = maxQuietWait

// ServedWholeWrites returns how many whole writes of the record of what
// was served s has tried.
func ServedWholeWrites(s *Server) int {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	return s.servedWholeWrites
}
