package metatool

import (
	"os"
	"path/filepath"
	"testing"
)

// shipped is the dataset directory this package generates.
const shipped = "../../datasets/metatool"

// TestShipped loads the dataset shipped in eval/datasets/metatool.
func TestShipped(t *testing.T) {
	checkSplits(t, shipped, map[string]int{"test": 3000, "dev": 3000, "train": 14544, "multi": 497}, 199)
}

// TestShippedUpToDate converts the MetaTool sources, when they are present,
// and checks that eval/datasets/metatool holds exactly the result. The
// sources are looked for in $METATOOL_SRC, then in shared/evaldata/metatool
// beside the repository.
func TestShippedUpToDate(t *testing.T) {
	src := os.Getenv("METATOOL_SRC")
	if src == "" {
		src = "../../../../shared/evaldata/metatool"
	}
	if _, err := os.Stat(filepath.Join(src, ToolsFile)); err != nil {
		t.Skipf("MetaTool sources not found (%v); set METATOOL_SRC to check the shipped dataset", err)
	}
	ds, err := Convert(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	compareDir(t, ds, shipped)
}
