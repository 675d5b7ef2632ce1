/* model_data.S - the model files and sample inputs the tfmicro crate ships, put in flash
 * as they are (the Makefile passes the crate's examples/models folder with -Wa,-I).
 * Each file gets `<name>` (16-aligned, as TFLM wants a flatbuffer) and `<name>_end`. */
#define FILE(sym, path)          \
    .global sym, sym##_end;      \
    .balign 16;                  \
sym:                             \
    .incbin path;                \
sym##_end:

    .section .rodata.tflm_model_files, "a"
FILE(g_hello_world_tflite, "hello_world.tflite")
FILE(g_micro_speech_tflite, "micro_speech.tflite")
FILE(g_magic_wand_tflite, "magic_wand.tflite")
/* micro_speech: 49 x 40 spectrogram features of a "yes" and a "no" recording. */
FILE(g_yes_features, "yes_micro_f2e59fea_nohash_1.data")
FILE(g_no_features, "no_micro_f9643d42_nohash_4.data")
/* magic_wand: 128 x 3 accelerometer readings (big-endian float32) of a ring and a slope. */
FILE(g_ring_gesture, "ring_micro_f9643d42_nohash_4.data")
FILE(g_slope_gesture, "slope_micro_f2e59fea_nohash_1.data")
