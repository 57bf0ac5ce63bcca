package index

// LexicalBytes returns what server's terms are charged in the BM25F index
// and in the passage index (lexical.Index.GroupBytes), in bytes.
func (ix *Index) LexicalBytes(server string) (descriptors, passages int64) {
	return ix.lex.GroupBytes(server), ix.words.x.GroupBytes(server)
}
