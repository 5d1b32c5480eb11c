/**
 * @class pqSparseGridInspector
 * @brief The Compression Inspector dock (View > Compression Inspector). It follows the active
 * source; for a compressed dataset (Sparse Grid Hierarchize's output, or a .sgrid file opened
 * with the Sparse Grid Reader) it shows, per array, the ratio, stored bytes, bound, measured
 * errors, backend and time from the SparseGrid.* field data; a level-of-detail slider with the
 * bytes read and the bound that holds at that level (set on the reader, and on the Resample To
 * Image / Reconstruct filters downstream, which then show that level); a rate-distortion chart
 * computed on a worker thread from a sample of the original image, where a click sets the bound
 * on Sparse Grid Hierarchize and re-applies it; and a histogram of |error| / bound on that
 * sample.
 *
 * With the environment variable SPARSEGRID_INSPECTOR_SNAPSHOT set to a folder, every update
 * writes what the panel shows to inspector.json and a picture of the panel to inspector.png
 * there (the GUI tests read both back).
 */
#ifndef pqSparseGridInspector_h
#define pqSparseGridInspector_h

#include <QDockWidget>
#include <QPointer>
#include <QVector>
#include <QWidget>

#include <memory>

class QLabel;
class QProgressBar;
class QPushButton;
class QSlider;
class QTableWidget;
class QTimer;
class pqPipelineSource;
class vtkDataObject;

/// A small chart painted with QPainter: rate-distortion (ratio and PSNR against the bound, log
/// scale) or a histogram. A click on the rate-distortion chart picks the point nearest in x.
class pqSparseGridInspectorPlot : public QWidget
{
  Q_OBJECT
public:
  struct Point
  {
    double Bound, Ratio, PSNR;
  };
  explicit pqSparseGridInspectorPlot(QWidget* parent = nullptr);
  void setRateDistortion(const QVector<Point>& points, double current);
  void setHistogram(const QVector<double>& bins, const QString& caption);
  QSize sizeHint() const override { return QSize(320, 170); }

Q_SIGNALS:
  void boundClicked(double bound);

protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;

private:
  void paintRates(class QPainter& painter, const QRect& area);
  void paintHistogram(class QPainter& painter, const QRect& area);
  QRect plotArea() const;
  QVector<Point> Points;
  QVector<double> Bins;
  QString Caption;
  double Current = 0;
  bool Histogram = false;
};

class pqSparseGridInspector : public QDockWidget
{
  Q_OBJECT
public:
  explicit pqSparseGridInspector(QWidget* parent = nullptr);
  ~pqSparseGridInspector() override;

private Q_SLOTS:
  void onSourceChanged(pqPipelineSource* source);
  void refresh();
  void onLevelChanged(int level);
  void startRates();
  void pollRates();
  void onRateButton();
  void applyBound(double relative);

private:
  vtkDataObject* representation();
  void stopRates();
  void showLevel(int level);
  void startPreview(int level);
  void showPreview();
  void snapshot();
  QWidget* buildTable();
  QWidget* buildLevels();
  QWidget* buildRates();

  struct Internals;
  std::unique_ptr<Internals> In;
  QPointer<pqPipelineSource> Source;
  QWidget* Body;
  QLabel* Summary;
  QTableWidget* Table;
  QLabel* Provenance;
  QSlider* Level;
  QLabel* LevelText;
  QLabel* Preview;
  pqSparseGridInspectorPlot* Rates;
  pqSparseGridInspectorPlot* Errors;
  QProgressBar* Progress;
  QPushButton* RateButton;
  QLabel* RateText;
  QTimer* Poll;
};

#endif
