package mcpserver

// SubscriptionsHeld returns how many resources s counts as subscribed to
// downstream, and how many sessions hold subscriptions.
func SubscriptionsHeld(s *Server) (resources, sessions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs), len(s.sessSubs)
}
