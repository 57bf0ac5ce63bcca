package mcpserver_test

import "testing"

// TestSlow runs the package's tests that take a minute or more under
// -race. The README's test command skips it (-skip '^TestSlow$'); the
// second test command runs it alone (-run '^TestSlow$').
func TestSlow(t *testing.T) {
	t.Run("ABridgeRenamingContextdsListIsCut", testABridgeRenamingContextdsListIsCut)
	t.Run("ABridgeBesideAGrowingServerIsCut", testABridgeBesideAGrowingServerIsCut)
	t.Run("ACumulativeLogBesideABridgeStaysListed", testACumulativeLogBesideABridgeStaysListed)
	t.Run("ASteadyBridgeRewritingEveryLetterGrowsByThePace", testASteadyBridgeRewritingEveryLetterGrowsByThePace)
	t.Run("EntriesTakingThePlaceOfOthersAreListedAtOnce", testEntriesTakingThePlaceOfOthersAreListedAtOnce)
}
