// The guest's stand-in for the Kubernetes API server (no API server runs in the guest, nor
// Python): serves this node's Node object and pods as the files a guest script lays them,
// per the API's JSON, for statlet's --memory-qos.apiserver.
//
//   GET /api/v1/nodes/NAME   DIR/node.json
//   GET /api/v1/pods         DIR/pods.json (a PodList; the script writes only this node's pods)
//   GET /api/v1/pods?watch=… 200, chunked, no event: the pods do not change while a layout
//                            is judged; the stream stays open until the client leaves
//
// usage: statlet_vm_apiserver --port PORT --dir DIR
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0) port = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
  }
  if (port <= 0 || dir.empty()) {
    std::fprintf(stderr, "usage: statlet_vm_apiserver --port PORT --dir DIR\n");
    return 2;
  }
  httplib::Server server;
  server.Get(R"(/api/v1/nodes/([a-z0-9.-]+))", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(Read(dir + "/node.json"), "application/json");
  });
  server.Get("/api/v1/pods", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.get_param_value("watch") != "true") {
      res.set_content(Read(dir + "/pods.json"), "application/json");
      return;
    }
    res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
      // No event to send: wait, and notice a client that left at the next write.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      return sink.is_writable();
    });
  });
  std::fprintf(stderr, "statlet_vm_apiserver: serving %s on 127.0.0.1:%d\n", dir.c_str(), port);
  return server.listen("127.0.0.1", port) ? 0 : 1;
}
