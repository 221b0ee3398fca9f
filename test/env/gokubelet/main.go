// A kubelet exec endpoint built from the real kubelet code (k8s.io/kubelet's streaming remotecommand,
// which the kubelet's CRI streaming server runs), for tests that hold our exec client to it. Commands:
// `exit N` ends with that exit code (a NonZeroExitCode status), `cat` copies stdin to stdout, `echo
// ARGS` prints them, `fail MESSAGE` is a provider error, anything else prints its argv to stderr.
// It listens on -addr with -cert/-key and prints the port it got.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/remotecommand"
	kubeletremotecommand "k8s.io/kubelet/pkg/cri/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

type executor struct{}

func (executor) ExecInContainer(ctx context.Context, name string, uid types.UID, container string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, timeout time.Duration) error {
	switch {
	case len(cmd) == 2 && cmd[0] == "exit":
		code, _ := strconv.Atoi(cmd[1])
		return utilexec.CodeExitError{Err: fmt.Errorf("exit status %d", code), Code: code}
	case len(cmd) == 1 && cmd[0] == "cat":
		_, err := io.Copy(out, in)
		return err
	case len(cmd) >= 1 && cmd[0] == "echo":
		_, err := fmt.Fprintln(out, strings.Join(cmd[1:], " "))
		return err
	case len(cmd) >= 1 && cmd[0] == "fail":
		return errors.New(strings.Join(cmd[1:], " "))
	default:
		_, err := fmt.Fprintln(errOut, strings.Join(cmd, " "))
		return err
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	cert := flag.String("cert", "", "serving certificate")
	key := flag.String("key", "", "serving key")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", func(w http.ResponseWriter, req *http.Request) {
		opts, err := kubeletremotecommand.NewOptions(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		kubeletremotecommand.ServeExec(w, req, executor{}, req.PathValue("pod"), "", req.PathValue("container"),
			req.URL.Query()["command"], opts, 30*time.Second, 30*time.Second, remotecommandconsts.SupportedStreamingProtocols)
	})
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(listener.Addr().(*net.TCPAddr).Port)
	if err := http.ServeTLS(listener, mux, *cert, *key); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
