package env

import (
	"path/filepath"

	"github.com/lockstep-dev/lockstep/test/framework/controllermanager"
)

// StartControllerManager runs kube-controller-manager's namespace,
// garbage-collector and ClusterRole aggregation controllers against the
// API server, as in a cluster, until the returned stop is called: a
// deleted namespace then goes once everything in it is deleted. Without
// it, nothing removes a deleted namespace. Its log is in the working
// directory.
func (e *Env) StartControllerManager() (stop func() error, err error) {
	cm, err := controllermanager.Start(e.cp.Env, controllermanager.Options{
		Assets: e.opts.Assets, Dir: filepath.Join(e.Dir, "kcm"), LogFile: filepath.Join(e.Dir, "kube-controller-manager.log"),
	})
	if err != nil {
		return nil, err
	}
	return cm.Stop, nil
}
