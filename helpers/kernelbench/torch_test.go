package kernelbench

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The PyTorch script knows every op and every distribution an input of a problem is drawn from,
// by the names the Go data gives them, and is valid Python (where python3 is installed).
func TestScript(t *testing.T) {
	s := Script()
	for _, op := range []Op{MatMul, Softmax, LayerNorm, Conv2d, Conv2dReLUBias} {
		if !strings.Contains(s, `"`+string(op)+`"`) {
			t.Errorf("the script does not handle op %q", op)
		}
	}
	for _, p := range Problems() {
		for _, ts := range p.Tensors {
			if !ts.Param && ts.Dist != Rand && !strings.Contains(s, `"`+string(ts.Dist)+`"`) {
				t.Errorf("%s: the script cannot draw %s's %s", p.ID(), ts.Name, ts.Dist)
			}
		}
	}
	// the keys the script reads from ARGS and from the problem are the JSON names Go writes
	args, err := json.Marshal(newTorchFiles(t.TempDir(), Problems()[6], Config{}.Method).args)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"problem", "params", "trials", "time", "matmul_tf32", "cudnn_tf32", "op", "tensors", "out", "conv", "stride", "padding", "bias", "shape", "dist", "param", "name"} {
		if !strings.Contains(string(args), `"`+key+`"`) || !strings.Contains(s, `"`+key+`"`) {
			t.Errorf("key %q: in the arguments %v, in the script %v", key, strings.Contains(string(args), `"`+key+`"`), strings.Contains(s, `"`+key+`"`))
		}
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to parse the script")
	}
	cmd := exec.Command(python, "-c", "import ast, sys; ast.parse(sys.stdin.read())")
	cmd.Stdin = strings.NewReader(s)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("the script is not valid Python: %v\n%s", err, stderr.String())
	}
}
