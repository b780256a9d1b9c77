"""tile -> gpu: the distributed GPU codegen (each thread's elements as register vectors), its
layout and register models, and the passes of the gpu and nvvm stages."""
