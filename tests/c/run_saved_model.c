/* Runs tensors of a SavedModel through TensorFlow's session-based C++ loader (LoadSavedModel, the path TF
 * Serving takes), with no Python and no tensorflow-text ops loaded.
 *
 * Usage: run_saved_model EXPORT_DIR < SPEC, SPEC lines:
 *   in  OP:INDEX DTYPE RANK DIM... FILE    feed a tensor read from FILE (raw little-endian; DTYPE int32|float)
 *   out OP:INDEX FILE                      fetch a tensor, write its raw bytes to FILE
 * Prints "OP:INDEX DTYPE RANK DIM..." per fetched tensor. On a TF error prints it to stderr and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/c/c_api.h"

#define MAX_TENSORS 16

static void check(TF_Status *status, const char *what) {
  if (TF_GetCode(status) != TF_OK) {
    fprintf(stderr, "%s: %s\n", what, TF_Message(status));
    exit(1);
  }
}

static TF_Output output_named(TF_Graph *graph, char *name) {
  char *colon = strrchr(name, ':');
  int index = 0;
  if (colon) {
    *colon = '\0';
    index = atoi(colon + 1);
  }
  TF_Operation *op = TF_GraphOperationByName(graph, name);
  if (!op) {
    fprintf(stderr, "no operation %s in the graph\n", name);
    exit(2);
  }
  TF_Output out = {op, index};
  return out;
}

static void *read_file(const char *path, size_t size) {
  FILE *f = fopen(path, "rb");
  void *data = malloc(size ? size : 1);
  if (!f || fread(data, 1, size, f) != size) {
    fprintf(stderr, "cannot read %zu bytes from %s\n", size, path);
    exit(2);
  }
  fclose(f);
  return data;
}

static void free_buffer(void *data, size_t len, void *arg) { free(data); }

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s EXPORT_DIR < SPEC\n", argv[0]);
    return 2;
  }
  TF_Status *status = TF_NewStatus();
  TF_Graph *graph = TF_NewGraph();
  TF_SessionOptions *options = TF_NewSessionOptions();
  const char *tags[] = {"serve"};
  TF_Session *session = TF_LoadSessionFromSavedModel(options, NULL, argv[1], tags, 1, graph, NULL, status);
  check(status, "TF_LoadSessionFromSavedModel");

  TF_Output inputs[MAX_TENSORS], outputs[MAX_TENSORS];
  TF_Tensor *input_values[MAX_TENSORS], *output_values[MAX_TENSORS];
  char output_files[MAX_TENSORS][512];
  int n_in = 0, n_out = 0;
  char kind[8], name[512], dtype_name[16], path[512];
  while (scanf("%7s %511s", kind, name) == 2) {
    if (strcmp(kind, "in") == 0 && n_in < MAX_TENSORS) {
      int rank;
      int64_t dims[8];
      size_t count = 1;
      if (scanf("%15s %d", dtype_name, &rank) != 2 || rank > 8) return 2;
      for (int i = 0; i < rank; ++i) {
        if (scanf("%ld", &dims[i]) != 1) return 2;
        count *= (size_t)dims[i];
      }
      if (scanf("%511s", path) != 1) return 2;
      TF_DataType dtype = strcmp(dtype_name, "float") == 0 ? TF_FLOAT : TF_INT32;
      size_t size = count * TF_DataTypeSize(dtype);
      inputs[n_in] = output_named(graph, name);
      input_values[n_in] = TF_NewTensor(dtype, dims, rank, read_file(path, size), size, free_buffer, NULL);
      ++n_in;
    } else if (strcmp(kind, "out") == 0 && n_out < MAX_TENSORS) {
      if (scanf("%511s", path) != 1) return 2;
      strcpy(output_files[n_out], path);
      outputs[n_out] = output_named(graph, name);
      ++n_out;
    } else {
      return 2;
    }
  }
  TF_SessionRun(session, NULL, inputs, input_values, n_in, outputs, output_values, n_out, NULL, 0, NULL, status);
  check(status, "TF_SessionRun");
  for (int i = 0; i < n_out; ++i) {
    TF_Tensor *t = output_values[i];
    FILE *f = fopen(output_files[i], "wb");
    fwrite(TF_TensorData(t), 1, TF_TensorByteSize(t), f);
    fclose(f);
    printf("%s:%d %s %d", TF_OperationName(outputs[i].oper), outputs[i].index,
           TF_TensorType(t) == TF_FLOAT ? "float" : "int32", TF_NumDims(t));
    for (int d = 0; d < TF_NumDims(t); ++d) printf(" %ld", (long)TF_Dim(t, d));
    printf("\n");
    TF_DeleteTensor(t);
  }
  for (int i = 0; i < n_in; ++i) TF_DeleteTensor(input_values[i]);
  TF_CloseSession(session, status);
  TF_DeleteSession(session, status);
  TF_DeleteSessionOptions(options);
  TF_DeleteGraph(graph);
  TF_DeleteStatus(status);
  return 0;
}
